"""Mutations of the matrix-file readers and the column blocks of the blocked sweep: ranges found
by scanning, the 10x axis, dense zeros, value checks, the prior swap and the label swap."""

from benchmarks.mutation._harness import Mutation

_MF = "bnmfzoo/datasets/matrixfiles.py"
_SRC = "bnmfzoo/inference/blocked/_sources.py"
_FIT = "bnmfzoo/inference/blocked/fit.py"
_TMF = "tests/datasets/test_matrixfiles.py::"
_TBI = "tests/scale/test_blocked_inputs.py::"

MUTATIONS = [
    Mutation(
        id="inputs-scan-drops-first-row", path=_MF,
        old="keep = np.flatnonzero((piece >= a) & (piece < b))",
        new="keep = np.flatnonzero((piece > a) & (piece < b))",
        tests=(f"{_TMF}test_blocks_equal_the_in_memory_blocks[csc.h5ad]",),
        why="a range read across the compressed axis (rows of a CSC X) loses its first row"),
    Mutation(
        id="inputs-10x-axis-swapped", path=_MF,
        old="        by = 1 if self.transposed else 0  # logical rows: stored columns when "
            "transposed\n",
        new="        by = 0 if self.transposed else 1  # logical rows: stored columns when "
            "transposed\n",
        tests=(f"{_TMF}test_blocks_equal_the_in_memory_blocks[tenx]",),
        why="a 10x matrix.mtx range is cut along genes instead of cells"),
    Mutation(
        id="inputs-dense-counts-store-zeros", path=_MF,
        old="        keep = (piece != 0) if counts else ~np.isnan(piece)\n",
        new="        keep = ~np.isnan(piece)\n",
        tests=(f"{_TMF}test_blocks_equal_the_in_memory_blocks[dense.zarr]",),
        why="a dense count file's zero cells are stored as entries (blocks differ from the "
            "in-memory matrix's)"),
    Mutation(
        id="inputs-negative-counts-pass", path=_MF,
        old="        if v.min() < 0:\n",
        new="        if v.min() < -1:\n",
        tests=(f"{_TMF}test_negative_entries_refused_at_open_and_in_a_later_block",),
        why="negative counts down to -1 reach a count model"),
    Mutation(
        id="inputs-column-blocks-priors-not-swapped", path=_FIT,
        old="        lambda_A, lambda_W = lambda_W, lambda_A\n",
        new="        lambda_A, lambda_W = lambda_A, lambda_W\n",
        tests=(f"{_TBI}test_column_blocks_are_the_transposed_fit_bit_for_bit[gaussian]",),
        why="column blocks fit X^T with the rates of A and W not swapped (another posterior "
            "when lambda_A != lambda_W)"),
    Mutation(
        id="inputs-column-blocks-labels-not-swapped", path=_SRC,
        old='    coords = {"row": post["col"].values, "col": rows["row"].values,\n',
        new='    coords = {"row": post["col"].values, "col": rows["row"].values[::-1],\n',
        tests=(f"{_TBI}test_column_blocks_keep_labels_of_anndata_and_files",),
        why="the column labels of a column-blocked fit come back in the wrong order"),
]
