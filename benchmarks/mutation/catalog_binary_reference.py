"""Mutations of the per-label reference of the collapsed Beta-Dir chains
(``bnmfzoo/inference/binary/_reference.py``): the tempered conditional of the kernel (the
powers of ``p(z | rest)`` and ``q`` swapped, a stale column ratio, a label's counts not added
back), the tempered term (``log p0`` dropped, the sign of ``log q``), the reference fit (no
pseudo-count, the column permutation not inverted) and the exact draws of ``q``. Each is caught
by a fast test with a known answer: a direct computation of the conditional, enumeration of the
tempered target or of every labelling, the frequencies of ``q``. The same for the reference
symmetrized over the label copies (``_reference_symmetric.py``): its copy sums, its power, its
draws and density, the ``log K!`` it must not add, and the route's rule for using it."""

from benchmarks.mutation._harness import Mutation

_REF = "bnmfzoo/inference/binary/_reference.py"
#: the remove / add step the reference sweep shares with the plain collapsed sweep
_CORE = "bnmfzoo/inference/binary/_core.py"
_T = "tests/binary/test_binary_reference_path.py::"
_COND = _T + "test_kernel_conditional_matches_direct_computation[0.37]"
_INV = _T + "test_kernel_leaves_the_tempered_target_invariant[0]"
_ENUM = _T + "test_reference_log_z_matches_enumeration[0]"
#: the same enumeration, by the parallel tempering of ``bnmfzoo masses``' binary route
_PTENUM = _T + "test_reference_tempering_log_z_matches_enumeration[0]"
_B0 = _T + "test_b0_draws_are_the_references[0]"
_ALIGN = _T + "test_draws_are_renamed_to_the_representatives_columns"
_SYM = "bnmfzoo/inference/binary/_reference_symmetric.py"
_S = "tests/binary/test_binary_symmetric_reference.py::"
_SINV = _S + "test_symmetric_sweep_leaves_the_tempered_target_invariant[0.6-0]"
_SINV0 = _S + "test_symmetric_sweep_leaves_the_tempered_target_invariant[0.0-0]"
_SDRAW = _S + "test_draws_and_density_are_the_symmetrized_references[0]"
_SENUM = _S + "test_symmetric_path_estimates_the_total_without_log_k_factorial[0]"
_SPT = _S + "test_symmetric_tempering_estimates_the_total_without_log_k_factorial[0]"
_SRULE = _S + "test_a_symmetric_path_gives_no_copy_reason_and_the_retry_rule"
_SE2E = _S + "test_overlapping_copies_are_checked_again_along_the_symmetric_reference[0-"

MUTATIONS = [
    Mutation(
        id="binary-ref-powers-swapped", path=_REF,
        old="t = beta * math.log((g[kk] + L[f, kk]) * r[n, kk]) + w_ref * log_q[i, kk]",
        new="t = w_ref * math.log((g[kk] + L[f, kk]) * r[n, kk]) + beta * log_q[i, kk]",
        tests=(_COND, _INV),
        why="the weights of the collapsed conditional and of the reference swapped: the sweep "
            "targets q^b p^(1-b), not q^(1-b) p^b"),
    Mutation(
        id="binary-ref-stale-ratio-after-remove", path=_CORE,
        old="        C0[n, k] += step\n    inv = 1.0 / (a[k] + b[k] + C1[n, k] + C0[n, k])\n",
        new=("        C0[n, k] += step\n    if step < 0.0:\n        return\n"
             "    inv = 1.0 / (a[k] + b[k] + C1[n, k] + C0[n, k])\n"),
        tests=(_COND, _INV),
        why="stale count: the cached column ratios still hold the entry's own label while its "
            "conditional is computed"),
    Mutation(
        id="binary-ref-row-count-not-added", path=_CORE,
        old="    L[f, k] += step\n",
        new="    L[f, k] += min(step, 0.0)\n",
        tests=(_INV, _ENUM),
        why="the row counter loses every label drawn: the counts drift from the labels"),
    Mutation(
        id="binary-ref-log-p0-dropped", path=_REF,
        old="        return self._log_p0\n",
        new="        return 0.0\n",
        tests=(_ENUM, _PTENUM),
        why="the uniform labels' -n log K missing from the tempered term: the log Z is that of "
            "the counting measure, n log K above the SMC from the prior's"),
    Mutation(
        id="binary-ref-log-q-sign", path=_REF,
        old='        return float(q["log_q"][np.arange(self.n), s.z].sum())\n',
        new='        return -float(q["log_q"][np.arange(self.n), s.z].sum())\n',
        tests=(_ENUM, _PTENUM, _B0),
        why="wrong sign of the reference in the incremental weight: the path ends at p0 L q^2"),
    Mutation(
        id="binary-ref-no-pseudo-count", path=_REF,
        old="lq = np.log(counts + self.pseudo) - math.log(d.shape[0] + self.K * self.pseudo)",
        new="lq = np.log(counts) - math.log(d.shape[0])",
        tests=(_B0,),
        why="a label no chain draw gave an entry has q = 0: the path cannot reach it and the "
            "weights of the posterior's labellings that use it are infinite"),
    Mutation(
        id="binary-ref-permutation-not-inverted", path=_REF,
        old="        inv[np.asarray(perm)] = np.arange(self.K)\n",
        new="        inv[:] = np.asarray(perm)\n",
        tests=(_ALIGN,),
        why="the column permutation applied instead of its inverse: at K >= 3 the draws of "
            "different chains are renamed inconsistently and q mixes the labels"),
    Mutation(
        id="binary-ref-draw-q-reversed", path=_REF,
        old='z = np.minimum((q["cum"] <= u[:, None]).sum(1), self.K - 1).astype(np.int64)',
        new='z = np.minimum((q["cum"] > u[:, None]).sum(1), self.K - 1).astype(np.int64)',
        tests=(_B0,),
        why="the inverse CDF read the wrong way: the b = 0 draws are not q's"),
    Mutation(
        id="binary-sym-copy-sums-stale", path=_SYM,
        old="            S[p] = m[p] + log_q[i, perms[p, k]]\n",
        new="            S[p] = m[p] + log_q[i, perms[p, old]]\n",
        tests=(_SINV, _SINV0),
        why="the per-permutation sums keep the label's old value after it moved: the later "
            "labels' conditionals read a reference of labels no longer there"),
    Mutation(
        id="binary-sym-reference-power-dropped", path=_SYM,
        old="+ w_ref * (mtop + math.log(s))",
        new="+ (mtop + math.log(s))",
        tests=(_SINV,),
        why="the symmetrized reference at power 1 instead of 1 - b: the sweep targets "
            "q_sym p^b, not q_sym^(1-b) p^b (the same at b = 0)"),
    Mutation(
        id="binary-sym-draw-not-permuted", path=_SYM,
        old="        return self.relabelled(s, self.perms[rng.integers(self.perms.shape[0])])\n",
        new="        return s\n",
        tests=(_SDRAW,),
        why="the b = 0 draws are q's, on one copy, while the weights take them for q_sym's"),
    Mutation(
        id="binary-sym-density-not-normalized", path=_SYM,
        old="        return float(logsumexp(per) - math.log(self.perms.shape[0]))\n",
        new="        return float(logsumexp(per))\n",
        tests=(_SDRAW, _SENUM),
        why="log q_sym without its 1 / K!: the path's log Z is log K! low"),
    Mutation(
        id="binary-sym-log-k-factorial-added", path=_SYM,
        old="    symmetric = True\n    label_copies = 1\n",
        new="    symmetric = True\n",
        tests=(_SENUM, _SPT),
        why="the total adds log K! to a per-mode log Z that already holds every copy: it "
            "over-counts, as the product reference's does when the copies overlap"),
    Mutation(
        id="binary-sym-copy-reason-kept", path="bnmfzoo/inference/_mass_verdict.py",
        old='    copies = () if smc.get("symmetric") else smc.get("swapped", ())',
        new='    copies = smc.get("swapped", ())',
        tests=(_SRULE,),
        why="a symmetrized path's particles on the other copies, which it puts there, refuse "
            "the masses as overlapping copies"),
    Mutation(
        id="binary-sym-retry-any-family", path="bnmfzoo/inference/reference_check.py",
        old=('    return (family.name in SYMMETRIC_FAMILIES and not getattr(family, "symmetric", '
             'False)'),
        new='    return (not getattr(family, "symmetric", False)',
        tests=(_SRULE,),
        why="the retry asked of a family with no path that holds every copy: its check would "
            "raise instead of saying why the copies overlap"),
    Mutation(
        id="binary-sym-per-mode-retry-skipped", path="bnmfzoo/inference/smc_masses.py",
        old='            if symmetric_retry(family, pm["reasons"], cl["reference"].shape[2]):',
        new='            if not pm and symmetric_retry(family, pm["reasons"], '
            'cl["reference"].shape[2]):',
        tests=(_SE2E + "reference_pt]",),
        why="the per-mode route never runs again along the symmetrized reference: a binary "
            "matrix whose copies overlap is refused as before"),
    Mutation(
        id="binary-sym-reference-retry-skipped", path="bnmfzoo/inference/reference_check.py",
        old='    if not symmetric_retry(family, out[3], smc_found[3]["reference"].shape[2]):',
        new='    if True:',
        tests=(_SE2E + "reference]",),
        why="the library's default check never runs again along the symmetrized reference"),
    Mutation(
        id="binary-sym-budget-reason-dropped", path="bnmfzoo/inference/reference_check.py",
        old='        return {**pm, "reasons": list(pm["reasons"]) + [_budget_reason(err)]}\n',
        new="        return pm\n",
        tests=(_S + "test_a_retry_the_budget_cuts_short_keeps_the_first_result_and_says_so",),
        why="a retry the budget cut short leaves no reason: the statement advises the rank "
            "while the retry only needed more CPU"),
]
