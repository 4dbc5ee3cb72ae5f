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


def class_major_labels(K: int, n: int) -> np.ndarray:
    """Labels of the UFM layout: n features per class, class-major (k n .. k n + n - 1 are class k)."""
    return np.repeat(np.arange(K), n)


def _features(H, labels, K=None):
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
    if np.any(counts == 0):
        raise InvalidArgument(
            f"every class needs a feature; classes {np.flatnonzero(counts == 0).tolist()} have none"
        )
    return H, y, K, counts


def class_means(H, labels, K: int | None = None) -> np.ndarray:
    """(d, K) class means of the features."""
    H, y, K, counts = _features(H, labels, K)
    sums = np.zeros((H.shape[0], K))
    np.add.at(sums.T, y, H.T)
    return sums / counts


def gnc1(H, labels, centred: bool = False, K: int | None = None) -> float:
    """tr(Sigma_W Sigma_B^+) / K. Default: the paper's uncentred Sigma_B (Section 2.2); ``centred``
    subtracts the global mean of the class means first (Papyan et al., 2020).

    The pseudo-inverse drops eigenvalues of Sigma_B below ``PINV_RTOL`` times the largest: when the
    class means span fewer than d dimensions (K <= d), Sigma_B's null eigenvalues are float64
    round-off (~1e-16 relative), and inverting them would turn round-off in Sigma_W into O(1)."""
    H, y, K, _ = _features(H, labels, K)
    M = class_means(H, y, K)
    R = H - M[:, y]
    sigma_w = R @ R.T / H.shape[1]
    B = M - M.mean(axis=1, keepdims=True) if centred else M
    sigma_b = B @ B.T / K
    return float(np.trace(sigma_w @ np.linalg.pinv(sigma_b, rcond=PINV_RTOL, hermitian=True)) / K)


def gnc2(W) -> float:
    """rho_one-vs-rest(W), eq. (3); W is normalised column-wise first (so it applies to weight decay)."""
    return geometry.softmax_code_margin(geometry.validate_configuration(W))


def _check_pair(W, H, labels):
    W = geometry.validate_configuration(W, name="W", unit=False)
    H, y, K, _ = _features(H, labels, W.shape[1])
    if H.shape[0] != W.shape[0]:
        raise InvalidArgument(f"H has {H.shape[0]} rows but W has d = {W.shape[0]}")
    return W, H, y, K


def gnc3(W, H, labels) -> float:
    """mean_k (1 - <w_k, mean_k>): 0 when every class mean equals its classifier (self-duality)."""
    W, H, y, K = _check_pair(W, H, labels)
    return float(np.mean(1.0 - np.sum(W * class_means(H, y, K), axis=0)))


def ncc_accuracy(H, labels, means=None) -> float:
    """Accuracy of the nearest-class-centre classifier (the training class means unless given)."""
    H, y, K, _ = _features(H, labels)
    M = class_means(H, y, K) if means is None else np.asarray(means, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != H.shape[0]:
        raise InvalidArgument(f"means must be (d, K) with d = {H.shape[0]}, got shape {M.shape}")
    d2 = np.sum(H**2, axis=0)[:, None] - 2 * H.T @ M + np.sum(M**2, axis=0)[None, :]
    return float(np.mean(np.argmin(d2, axis=1) == y))


def nc2_etf_distance(W) -> float:
    """|| G / ||G||_F - E / ||E||_F ||_F with G = W^T W and E the simplex ETF Gram I - 11^T / K
    (classical NC2, K <= d + 1 only, where the softmax code is the simplex ETF, Theorem 3.3)."""
    W = geometry.validate_configuration(W, name="W", unit=False)
    d, K = W.shape
    if d + 1 < K:
        raise InvalidArgument(f"NC2 needs K <= d + 1 (a simplex ETF exists), got d={d}, K={K}")
    G = W.T @ W
    E = np.eye(K) - np.ones((K, K)) / K
    return float(np.linalg.norm(G / np.linalg.norm(G) - E / np.linalg.norm(E)))


def collapse_report(W, H, labels) -> dict:
    """GNC1 (paper's and centred), GNC2, GNC3, NCC accuracy and, for K <= d + 1, NC2."""
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
