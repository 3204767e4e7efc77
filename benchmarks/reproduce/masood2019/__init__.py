"""Masood & Doshi-Velez (2019): particle posteriors (KSD vs time, NUTS, missing data, noise)."""
