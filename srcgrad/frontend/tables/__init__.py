"""What Python, NumPy and SciPy constructs lower to, and the classification of NumPy's public
names: a rule, no gradient, or refused with a reason.
"""
