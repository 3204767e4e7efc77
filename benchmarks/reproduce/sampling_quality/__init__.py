"""Masood, Pan & Doshi-Velez (2016): sampling-quality and posterior-coverage case study."""
