"""Tools around the compiler: the command line and pictures of the graphs.
"""
