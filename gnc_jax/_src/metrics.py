"""Generalized neural collapse metrics of Section 2.2, for any features (UFM solutions or networks).

Features are columns of H, shape (d, N), with integer labels (N,) in [0, K); the UFM layout (d, n K),
class-major, has labels ``class_major_labels(K, n)``. All computed in float64.

* GNC1 = tr(Sigma_W Sigma_B^+) / K (variability collapse), with Sigma_W = (1/N) sum_i
  (h_i - mean_{y_i})(h_i - mean_{y_i})^T and Sigma_B = (1/K) sum_k mean_k mean_k^T. **The paper's
  Sigma_B is uncentred** (the default here); Papyan et al. and most NC code centre the class means
  at the global mean first (``centred=True``).
* GNC2 = rho_one-vs-rest(W), eq. (3) (certified by :mod:`gnc_jax._src.geometry`).
* GNC3 = mean_k (1 - <w_k, mean_k>) (self-duality).
* NCC accuracy: the fraction of features whose nearest class mean is their own class's.
* NC2 (K <= d + 1): distance of W's normalised Gram matrix to the simplex ETF's.
"""

from __future__ import annotations

import numpy as np

from gnc_jax._src import geometry
from gnc_jax._src.errors import InvalidArgument

PINV_RTOL = 1e-12
NCC_CHUNK = 4096  # features per block of the nearest-centre search: memory O(NCC_CHUNK K), not O(N K)


def class_major_labels(K: int, n: int) -> np.ndarray:
    """Labels of the UFM layout: n features per class, class-major (k n .. k n + n - 1 are class k).

    Args:
      K: number of classes.
      n: features per class.

    Returns:
      (n K,) integer labels.

    >>> class_major_labels(3, 2).tolist()
    [0, 0, 1, 1, 2, 2]
    """
    return np.repeat(np.arange(K), n)


def _features(H, labels, K=None, every_class=True):
    H = np.asarray(H, dtype=np.float64)
    if H.ndim != 2 or H.shape[1] < 1:
        raise InvalidArgument(f"H must be a (d, N) array of features, got shape {H.shape}")
    if not np.all(np.isfinite(H)):
        raise InvalidArgument("H contains NaN or inf")
    y = np.asarray(labels)
    if y.shape != (H.shape[1],) or not np.issubdtype(y.dtype, np.integer):
        raise InvalidArgument(
            f"labels must be {H.shape[1]} integers (one per column of H), got shape {y.shape}"
        )
    K = int(y.max()) + 1 if K is None else K
    if y.min() < 0 or y.max() >= K:
        raise InvalidArgument(f"labels must lie in [0, {K}), got range [{y.min()}, {y.max()}]")
    counts = np.bincount(y, minlength=K)
    if every_class and np.any(counts == 0):
        raise InvalidArgument(
            f"every class needs a feature; classes {np.flatnonzero(counts == 0).tolist()} have none"
        )
    return H, y, K, counts


def class_means(H, labels, K: int | None = None) -> np.ndarray:
    """The class means mean_k = (1 / n_k) sum_{i: y_i = k} h_i of the features (Section 2.2).

    Args:
      H: (d, N) features, one per column.
      labels: (N,) integer labels in [0, K).
      K: number of classes (default: the largest label + 1); every class needs a feature.

    Returns:
      (d, K) float64 class means.

    >>> class_means([[1.0, 3.0, 5.0]], [0, 0, 1]).tolist()
    [[2.0, 5.0]]
    """
    H, y, K, counts = _features(H, labels, K)
    sums = np.zeros((H.shape[0], K))
    np.add.at(sums.T, y, H.T)
    return sums / counts


def gnc1(H, labels, centred: bool = False, K: int | None = None) -> float:
    """GNC1 = tr(Sigma_W Sigma_B^+) / K, the within-class variability collapse (Section 2.2, eq. 6).

    Sigma_B^+ drops eigenvalues below ``PINV_RTOL`` times the largest: when the class means span
    fewer than d dimensions their null eigenvalues are round-off, which must not be inverted.

    Args:
      H: (d, N) features.
      labels: (N,) integer labels in [0, K).
      centred: False for the paper's uncentred Sigma_B; True subtracts the global mean of the class
        means first (Papyan et al., 2020).
      K: number of classes (default: the largest label + 1).

    Returns:
      GNC1 (0 when every feature equals its class mean).

    >>> gnc1([[1.0, 1.0, -1.0, -1.0]], [0, 0, 1, 1])
    0.0
    """
    H, y, K, _ = _features(H, labels, K)
    M = class_means(H, y, K)
    R = H - M[:, y]
    sigma_w = R @ R.T / H.shape[1]
    B = M - M.mean(axis=1, keepdims=True) if centred else M
    sigma_b = B @ B.T / K
    return float(np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=PINV_RTOL, hermitian=True)) / K)


def gnc2(W) -> float:
    """GNC2: the one-vs-rest margin rho_one-vs-rest(W) of eq. (3), which the classifier of a collapsed
    network maximises (a softmax code, Theorem 3.2).

    Args:
      W: (d, K) classifier; its columns are normalised first (so it applies to weight decay too).

    Returns:
      The certified margin (float64, :func:`gnc_jax.softmax_code_margin`; for large K the upper
      end of its certified bracket).

    >>> round(gnc2([[2.0, -1.0], [0.0, 0.0]]), 12)  # two antipodal classes: the distance 2
    2.0
    """
    return geometry.softmax_code_margin(geometry.validate_configuration(W))


def _check_pair(W, H, labels):
    W = geometry.validate_configuration(W, name="W", unit=False)
    H, y, K, _ = _features(H, labels, W.shape[1])
    if H.shape[0] != W.shape[0]:
        raise InvalidArgument(f"H has {H.shape[0]} rows but W has d = {W.shape[0]}")
    return W, H, y, K


def gnc3(W, H, labels) -> float:
    """GNC3 = mean_k (1 - <w_k, mean_k>), the self-duality of classifiers and class means (eq. 8).

    Args:
      W: (d, K) classifier.
      H: (d, N) features.
      labels: (N,) integer labels in [0, K).

    Returns:
      GNC3 (0 when every class mean equals its unit classifier).

    >>> gnc3([[1.0, -1.0], [0.0, 0.0]], [[1.0, -1.0], [0.0, 0.0]], [0, 1])
    0.0
    """
    W, H, y, K = _check_pair(W, H, labels)
    return float(np.mean(1.0 - np.sum(W * class_means(H, y, K), axis=0)))


def ncc_accuracy(H, labels, means=None) -> float:
    """Accuracy of the nearest-class-centre classifier argmin_k ||h - mean_k|| (Papyan et al., 2020).

    Args:
      H: (d, N) features.
      labels: (N,) integer labels.
      means: (d, K) centres (default: the class means of H, which then needs every class); with
        given centres, labels lie in [0, K) and a class may have no feature (a test split).

    Returns:
      The fraction of features whose nearest centre is their class's (found in blocks of
      ``NCC_CHUNK`` features, so K = 10^4 classes and 10^5 features fit in memory).

    >>> ncc_accuracy([[1.0, 2.0, -1.0]], [0, 0, 1])
    1.0
    """
    if means is None:
        H, y, K, _ = _features(H, labels)
        M = class_means(H, y, K)
    else:
        M = np.asarray(means, dtype=np.float64)
        if M.ndim != 2 or M.shape[0] != np.shape(H)[0]:
            raise InvalidArgument(f"means must be (d, K) with d = {np.shape(H)[0]}, got shape {M.shape}")
        H, y, _, _ = _features(H, labels, M.shape[1], every_class=False)
    m2 = np.sum(M**2, axis=0)
    hits = 0
    for i in range(0, H.shape[1], NCC_CHUNK):  # ||h||^2 is the same for every centre: dropped
        block = H[:, i : i + NCC_CHUNK]
        hits += int(np.sum(np.argmin(m2[None, :] - 2 * block.T @ M, axis=1) == y[i : i + NCC_CHUNK]))
    return hits / H.shape[1]


def nc2_etf_distance(W) -> float:
    """Classical NC2: || G / ||G||_F - E / ||E||_F ||_F with G = W^T W and E = I - 11^T / K, the
    simplex ETF's Gram matrix (defined for K <= d + 1, where the softmax code is the ETF, Theorem 3.3).

    Args:
      W: (d, K) classifier, K <= d + 1.

    Returns:
      The distance (0 at a simplex ETF, up to scale).

    >>> round(nc2_etf_distance([[1.0, -1.0], [0.0, 0.0]]), 12)
    0.0
    """
    W = geometry.validate_configuration(W, name="W", unit=False)
    d, K = W.shape
    if d + 1 < K:
        raise InvalidArgument(f"NC2 needs K <= d + 1 (a simplex ETF exists), got d={d}, K={K}")
    G = W.T @ W
    E = np.eye(K) - np.ones((K, K)) / K
    return float(np.linalg.norm(G / np.linalg.norm(G) - E / np.linalg.norm(E)))


def collapse_report(W, H, labels) -> dict:
    """Every collapse measure of a network's (W, H): GNC1 (eq. 6, the paper's and centred), GNC2
    (eq. 3), GNC3 (eq. 8), NCC accuracy and, for K <= d + 1, NC2.

    Args:
      W: (d, K) classifier.
      H: (d, N) features.
      labels: (N,) integer labels in [0, K).

    Returns:
      A dict with keys gnc1, gnc1_centred, gnc2, gnc3, ncc_accuracy and (K <= d + 1) nc2.
    """
    W, H, y, K = _check_pair(W, H, labels)
    out = {
        "gnc1": gnc1(H, y, K=K),
        "gnc1_centred": gnc1(H, y, centred=True, K=K),
        "gnc2": gnc2(W),
        "gnc3": gnc3(W, H, y),
        "ncc_accuracy": ncc_accuracy(H, y),
    }
    if W.shape[0] + 1 >= K:
        out["nc2"] = nc2_etf_distance(W)
    return out
