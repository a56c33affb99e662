"""What the emitters and the backends both read: the comment markers of generated code and the
helpers copied into generated modules.  It imports neither, so neither imports the other for it.
"""
