"""Mutations of the per-label reference of the collapsed Beta-Dir chains
(``bnmfzoo/inference/binary/_reference.py``): the tempered conditional of the kernel (the
powers of ``p(z | rest)`` and ``q`` swapped, a stale column ratio, a label's counts not added
back), the tempered term (``log p0`` dropped, the sign of ``log q``), the reference fit (no
pseudo-count, the column permutation not inverted) and the exact draws of ``q``. Each is caught
by a fast test with a known answer: a direct computation of the conditional, enumeration of the
tempered target or of every labelling, the frequencies of ``q``."""

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
]
