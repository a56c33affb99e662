"""srcgrad's code generator: reverse and forward emitters, backends and passes."""
