"""Paper reproductions, one package per paper (``make reproduce``; hours at full size)."""
