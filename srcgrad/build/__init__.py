"""Building a transform's module: one pipeline (:mod:`srcgrad.build.pipeline`) whose stages,
listed per transform kind (reverse, its specialisations, forward, a Hessian's loop), run the
front end, the analyses and an emitter in order, then render and load the module.
"""
