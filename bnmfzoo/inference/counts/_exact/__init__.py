"""Exact draws whose cost does not grow with the count, on the count wing's xoshiro256+ stream.

Binomial, Gamma, multinomial and Dirichlet-multinomial (:mod:`.variates`), CRT (:mod:`.crt`).
"""
