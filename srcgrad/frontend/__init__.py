"""The front end: a Python function's source parsed, checked and lowered to the core IR.

``parse`` reads the source with the user's file and lines; ``lower`` and its parts turn each
construct into single-operation assignments; ``tables/`` say what each Python and NumPy
construct lowers to, and why the others are refused.
"""
