"""The emitters: the reverse and forward passes of a lowered function, written as Python AST by
running the rule table's rules on symbols.
"""
