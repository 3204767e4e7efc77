"""Mutations of the label orbit's path (``bnmfzoo/inference/tempering/_label_orbit.py``): the
path the exponential-Gaussian and count families' per-mode estimators run again along when a
mode's label copies overlap. The orbit draw's power, the pairing matrix, the subset recursion
over the orbit and its draw, the relabelling of ``W``, the orbit mixture's log target, the
``log K!`` it must not add, the move itself, and the route's rule for using it. Each is caught
by a fast test with a known answer: the relabelled states' ``log q``, the enumerated orbit,
exact draws of the reference, the brute-force evidence of a 2 x 2 matrix, and the one-copy
total plus ``log 2`` where the copies are apart."""

from benchmarks.mutation._harness import Mutation

_ORB = "bnmfzoo/inference/tempering/_label_orbit.py"
_T = "tests/tempering/test_label_orbit.py::"
_PAIR = _T + "test_the_pairing_matrix_gives_every_relabellings_log_q[gaussian]"
_PAIRP = _T + "test_the_pairing_matrix_gives_every_relabellings_log_q[poisson]"
_KEEP = _T + "test_the_orbit_move_keeps_the_reference[gaussian]"
_MOVE = _T + "test_the_orbit_move_draws_each_relabelling_with_its_probability[gaussian]"
_MOVEP = _T + "test_the_orbit_move_draws_each_relabelling_with_its_probability[poisson]"
_SUB3 = _T + "test_the_subset_recursion_sums_and_draws_the_orbit_exactly[3]"
_SUB8 = _T + "test_the_subset_recursion_sums_and_draws_the_orbit_exactly[8]"
_K6 = _T + "test_the_log_target_sums_all_720_copies_at_rank_6[gaussian]"
_K6P = _T + "test_the_log_target_sums_all_720_copies_at_rank_6[poisson]"
_TARGET = _T + "test_the_log_target_is_the_orbit_mixtures[gaussian]"
_TARGETP = _T + "test_the_log_target_is_the_orbit_mixtures[poisson]"
_TOTAL = _T + "test_the_orbit_path_estimates_the_total_without_log_k_factorial[gaussian-0]"
_SEP = _T + "test_separated_copies_are_all_counted_by_the_move[0]"
_B1 = _T + "test_at_b_1_a_sweep_lands_on_either_copy_alike"
_BDIR = _T + "test_a_betadir_chain_is_relabelled_with_its_counters_and_paired_exactly"
_BDIR5 = ("tests/binary/test_binary_symmetric_reference.py::"
          "test_five_betadir_labels_get_the_total_along_the_label_orbit[0]")
_RULE = ("tests/binary/test_binary_symmetric_reference.py::"
         "test_a_symmetric_path_gives_no_copy_reason_and_the_retry_rule")

MUTATIONS = [
    Mutation(
        id="orbit-draw-power-is-beta", path=_ORB,
        old="        w = 1.0 - float(beta)\n        if not 0.0 <= w <= 1.0:",
        new="        w = float(beta)\n        if not 0.0 <= w <= 1.0:",
        tests=(_KEEP, _MOVE),
        why="the orbit draw weighs q by b, not 1 - b: at b = 0 it relabels uniformly, so the "
            "draws of q are no longer q's"),
    Mutation(
        id="orbit-pairing-transposed", path=_ORB,
        old="            t = pairing_draw(C, w, rng)\n",
        new="            t = pairing_draw(np.ascontiguousarray(C.T), w, rng)\n",
        tests=(_MOVE, _MOVEP),
        why="the pairing matrix read the other way: a relabelling is drawn with its inverse's "
            "probability (the sums over the orbit do not change: a permanent is unchanged by "
            "transposition)"),
    Mutation(
        id="orbit-subset-recursion-transposed", path=_ORB,
        old="                total += math.exp(w * C[r, j] + f[S ^ (1 << j)] - m)\n",
        new="                total += math.exp(w * C[j, r] + f[S ^ (1 << j)] - m)\n",
        tests=(_SUB3, _SUB8, _K6),
        why="the subset recursion pairs the subset's columns with the wrong rows: the partial "
            "sums, so the orbit's total and the draws, are wrong"),
    Mutation(
        id="orbit-subset-draw-without-the-power", path=_ORB,
        old="                x -= math.exp(w * C[r, j] + f[S ^ (1 << j)] - f[S])\n",
        new="                x -= math.exp(C[r, j] + f[S ^ (1 << j)] - f[S])\n",
        tests=(_SUB3, _MOVE),
        why="the draw's probabilities ignore the power 1 - b (and no longer sum to one)"),
    Mutation(
        id="orbit-subset-draw-rows-first-to-last", path=_ORB,
        old="    for r in range(K - 1, -1, -1):\n        x, last = u[r], -1\n",
        new="    for r in range(K):\n        x, last = u[r], -1\n",
        tests=(_SUB3, _SUB8),
        why="the draw takes the rows in the recursion's order, so row r's probabilities use "
            "the sums over the wrong rows"),
    Mutation(
        id="orbit-pairing-non-finite-let-through", path=_ORB,
        old="    if not np.isfinite(C).all():\n",
        new="    if False:\n",
        tests=(_PAIR,),
        why="a non-finite pairing (an overflowing reference) is drawn from instead of refused"),
    Mutation(
        id="orbit-copula-beyond-enumeration", path=_ORB,
        old="        if name == \"copula_widen\" and self.__dict__.get(\"perms\") is None:\n",
        new="        if False:\n",
        tests=(_K6P,),
        why="a copula reference offered at K! > 120, whose orbit this wrapper cannot enumerate"),
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
        tests=(_PAIR,),
        why="the categorical draw (a copula reference's enumerated orbit) never picks the "
            "first entry, the identity: every such orbit draw relabels"),
    Mutation(
        id="orbit-relabel-keeps-w", path=_ORB,
        old="        s.A[:, :] = s.A[:, p]\n        s.Wt[:, :] = s.Wt[:, p]\n",
        new="        s.A[:, :] = s.A[:, p]\n",
        tests=(_KEEP, _TOTAL),
        why="a Gaussian state's A relabelled but not its W: A W, so the likelihood, changes "
            "with every relabelling"),
    Mutation(
        id="orbit-log-target-of-one-copy", path=_ORB,
        old="        return (float(L(1.0 - b)[0] - L(1.0)[0]) - b * c\n",
        new="        return (-b * float(first[0]) - b * c\n",
        tests=(_TARGET, _TARGETP, _SEP),
        why="the SMC's and the tempering's log target is the product reference's, not the orbit "
            "mixture's: the mass of the other copies is weighed only at the particles that "
            "reached them, which near b = 1 none has yet"),
    Mutation(
        id="orbit-log-target-batch-of-one-copy", path=_ORB,
        old="            return (L(1.0 - b) - lse - b * c + b * p0 + np.asarray(data(b), float))\n",
        new="            return (-b * first - b * c + b * p0 + np.asarray(data(b), float))\n",
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
        old="            and rank <= MAX_ORBIT_RANK\n",
        new="            and math.factorial(rank) <= 24\n",
        tests=(_RULE,),
        why="the retry limited to Beta-Dir's symmetrized reference's K <= 4: over-ranked fits "
            "at K = 5-8 are refused again"),
    Mutation(
        id="orbit-retry-at-enumerated-ranks", path="bnmfzoo/inference/reference_check.py",
        old="            and rank <= MAX_ORBIT_RANK\n",
        new="            and math.factorial(rank) <= 120\n",
        tests=(_RULE,),
        why="the retry limited to the orbits a copula's enumeration covers (K <= 5), as "
            "before the subset recursion"),
    Mutation(
        id="orbit-retry-beta-dir-only", path="bnmfzoo/inference/reference_check.py",
        old="    return (family.name in SYMMETRIC_FAMILIES and",
        new="    return (family.name == \"beta_dir\" and",
        tests=(_RULE,),
        why="the retry along a path holding every copy asked of Beta-Dir models only: the other "
            "families' overlapping copies are refused again"),
    Mutation(
        id="orbit-betadir-counters-not-relabelled", path=_ORB,
        old="            arr[:, :] = arr[:, p]\n",
        new="            arr[:, :] = arr\n",
        tests=(_BDIR,),
        why="a Beta-Dir chain's labels relabelled but not its counters: its collapsed joint "
            "and the sweeps after it read counters of other labels"),
    Mutation(
        id="orbit-betadir-labels-by-the-permutation", path=_ORB,
        old="        s.z[:] = np.argsort(p)[s.z]  # the inverse permutation\n",
        new="        s.z[:] = p[s.z]  # the inverse permutation\n",
        tests=(_BDIR,),
        why="the labels renamed by the permutation instead of its inverse: at K >= 3 the labels "
            "and the counters disagree"),
    Mutation(
        id="orbit-betadir-pairing-transposed", path=_ORB,
        old="            C[k, j] += log_q[e, k]\n",
        new="            C[j, k] += log_q[e, k]\n",
        tests=(_BDIR,),
        why="the Beta-Dir pairing read the other way: a relabelling's log q is its inverse's"),
    Mutation(
        id="orbit-betadir-five-labels-on-one-copy", path="bnmfzoo/inference/reference_path.py",
        old=("        if family.name != \"beta_dir\" or math.factorial(base.K) > MAX_COPIES:\n"
             "            return LabelOrbitAdapter(base)"),
        new=("        if family.name != \"beta_dir\" or math.factorial(base.K) > MAX_COPIES:\n"
             "            return LabelOrbitAdapter(base) if family.name != \"beta_dir\" else base"),
        tests=(_BDIR5,),
        why="Beta-Dir above K = 4 run along the product reference's one-copy path and given "
            "log K!: where the copies overlap the total over-counts"),
]
