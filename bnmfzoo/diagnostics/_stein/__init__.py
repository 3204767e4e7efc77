"""Kernelized Stein discrepancy (Masood & Doshi-Velez 2019).

Kernels, scores, the Stein kernel matrix and Stein weights.
"""
