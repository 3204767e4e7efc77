"""Mutations of the label orbit's path (``bnmfzoo/inference/tempering/_label_orbit.py``): the
path the exponential-Gaussian and count families' per-mode estimators run again along when a
mode's label copies overlap. The orbit draw's power, the pairing matrix, the relabelling of
``W``, the orbit mixture's log target, the ``log K!`` it must not add, the move itself, and the
route's rule for using it. Each is caught by a fast test with a known answer: the relabelled
states' ``log q``, exact draws of the reference, the brute-force evidence of a 2 x 2 matrix,
and the one-copy total plus ``log 2`` where the copies are apart."""

from benchmarks.mutation._harness import Mutation

_ORB = "bnmfzoo/inference/tempering/_label_orbit.py"
_T = "tests/tempering/test_label_orbit.py::"
_PAIR = _T + "test_the_pairing_matrix_gives_every_relabellings_log_q[gaussian]"
_PAIRP = _T + "test_the_pairing_matrix_gives_every_relabellings_log_q[poisson]"
_KEEP = _T + "test_the_orbit_move_keeps_the_reference[gaussian]"
_TARGET = _T + "test_the_log_target_is_the_orbit_mixtures[gaussian]"
_TARGETP = _T + "test_the_log_target_is_the_orbit_mixtures[poisson]"
_TOTAL = _T + "test_the_orbit_path_estimates_the_total_without_log_k_factorial[gaussian-0]"
_SEP = _T + "test_separated_copies_are_all_counted_by_the_move[0]"
_B1 = _T + "test_at_b_1_a_sweep_lands_on_either_copy_alike"
_RULE = ("tests/binary/test_binary_symmetric_reference.py::"
         "test_a_symmetric_path_gives_no_copy_reason_and_the_retry_rule")

MUTATIONS = [
    Mutation(
        id="orbit-draw-power-is-beta", path=_ORB,
        old="        w = 1.0 - float(beta)\n        if not 0.0 <= w <= 1.0:",
        new="        w = float(beta)\n        if not 0.0 <= w <= 1.0:",
        tests=(_KEEP,),
        why="the orbit draw weighs q by b, not 1 - b: at b = 0 it relabels uniformly, so the "
            "draws of q are no longer q's"),
    Mutation(
        id="orbit-pairing-transposed", path=_ORB,
        old="            return _perm_sums(C, self.perms)",
        new="            return _perm_sums(np.ascontiguousarray(C.T), self.perms)",
        tests=(_PAIR, _PAIRP),
        why="the pairing matrix read the other way: the log q of a relabelling is that of its "
            "inverse"),
    Mutation(
        id="orbit-pairing-normal-scale-of-the-state", path=_ORB,
        old="                z = (A[i, j] - muA[i, k]) / sA[i, k]\n",
        new="                z = (A[i, j] - muA[i, k]) / sA[i, j]\n",
        tests=(_PAIR,),
        why="the compiled pairing of truncated normals scales by the state's component's sd, "
            "not the reference's"),
    Mutation(
        id="orbit-pairing-gamma-rate-of-the-state", path=_ORB,
        old="                C[k, j] += (aA[i, k] - 1.0) * lx - bA[i, k] * x\n",
        new="                C[k, j] += (aA[i, k] - 1.0) * lx - bA[i, j] * x\n",
        tests=(_PAIRP,),
        why="the compiled pairing of Gammas takes the rate of the state's component, not the "
            "reference's"),
    Mutation(
        id="orbit-draw-ignores-the-largest-logit", path=_ORB,
        old="        total += math.exp(logits[p] - m)\n",
        new="        total += math.exp(logits[p] - m) if p > 0 else 0.0\n",
        tests=(_PAIR, _KEEP),
        why="the categorical draw never picks the identity: every orbit draw relabels"),
    Mutation(
        id="orbit-relabel-keeps-w", path=_ORB,
        old="        s.A[:, :] = s.A[:, p]\n        s.Wt[:, :] = s.Wt[:, p]\n",
        new="        s.A[:, :] = s.A[:, p]\n",
        tests=(_KEEP, _TOTAL),
        why="a Gaussian state's A relabelled but not its W: A W, so the likelihood, changes "
            "with every relabelling"),
    Mutation(
        id="orbit-log-target-of-one-copy", path=_ORB,
        old=("        return (float(logsumexp((1.0 - b) * S) - logsumexp(S)) - b * c\n"),
        new=("        return (-b * float(S[0]) - b * c\n"),
        tests=(_TARGET, _TARGETP, _SEP),
        why="the SMC's and the tempering's log target is the product reference's, not the orbit "
            "mixture's: the mass of the other copies is weighed only at the particles that "
            "reached them, which near b = 1 none has yet"),
    Mutation(
        id="orbit-log-target-batch-of-one-copy", path=_ORB,
        old="            return (logsumexp((1.0 - b) * S, axis=1) - lse - b * c + b * p0\n",
        new="            return (-b * S[:, 0] - b * c + b * p0\n",
        tests=(_TARGET, _SEP),
        why="the batched log target (the SMC's choice of the next temperature and its weights) "
            "is the product reference's"),
    Mutation(
        id="orbit-adds-log-k-factorial", path=_ORB,
        old="    symmetric = True\n    label_copies = 1\n",
        new="    symmetric = True\n",
        tests=(_TOTAL,),
        why="the total adds log K! for copies the path already holds: log 2 high"),
    Mutation(
        id="orbit-move-skipped", path=_ORB,
        old=("        self.orbit_move(q, s, beta, rng)\n        self.base.sweep(q, s, beta, rng)\n"
             "        self.orbit_move(q, s, beta, rng)\n"),
        new="        self.base.sweep(q, s, beta, rng)\n",
        tests=(_B1, _SEP, _TOTAL),
        why="the sweep never relabels, so a particle is not an exact draw of the path within "
            "its orbit. The totals alone do not show it: the orbit mixture's weights carry the "
            "other copies' share wherever a particle sits, so on 2 x 2 matrices (copies apart, "
            "overlapping, or in between) the totals moved less than their errors "
            "(masses_symmetric_reference.md section 51); at b = 1 the sweep must land on "
            "either copy alike"),
    Mutation(
        id="orbit-retry-at-beta-dirs-ranks", path="bnmfzoo/inference/reference_check.py",
        old="    most = MAX_COPIES if family.name == \"beta_dir\" else MAX_ORBIT_COPIES\n",
        new="    most = MAX_COPIES\n",
        tests=(_RULE,),
        why="the label orbit's retry limited to Beta-Dir's K <= 4: an over-ranked count or "
            "Gaussian fit at K = 5 is refused again"),
    Mutation(
        id="orbit-retry-beta-dir-only", path="bnmfzoo/inference/reference_check.py",
        old="    return (family.name in SYMMETRIC_FAMILIES and",
        new="    return (family.name == \"beta_dir\" and",
        tests=(_RULE,),
        why="the retry along a path holding every copy asked of Beta-Dir models only: the other "
            "families' overlapping copies are refused again"),
]
