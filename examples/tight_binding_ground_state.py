"""The ground state of a tight-binding ring threaded by a magnetic flux, by gradient descent on a
complex wavefunction.

    python examples/tight_binding_ground_state.py [--sites 24] [--flux 0.3]

An electron hops between the N sites of a ring (amplitude t = 1) and sees a random on-site
energy; a magnetic flux through the ring gives each hop the Peierls phase exp(i 2 pi flux / N),
so the Hamiltonian H is Hermitian and complex. The ground-state energy is the minimum of the
Rayleigh quotient E(psi) = Re(psi^H H psi) / (psi^H psi) over complex psi. lucid's gradient of a
real function of a complex tensor is dL/d(re) + i dL/d(im) (PyTorch's convention), so the plain
step psi -= lr * psi.grad descends E; the gradient equals 2 (H psi - E psi) / (psi^H psi).
The result is checked against NumPy's eigvalsh.
"""
import argparse

import numpy as np

import lucid


def hamiltonian(sites, flux, disorder=0.5, seed=0):
    """The ring's H: -exp(+-i theta) between neighbours (theta = 2 pi flux / sites), random
    on-site energies in [-disorder, disorder]; complex128, Hermitian."""
    rng = np.random.default_rng(seed)
    h = np.diag(rng.uniform(-disorder, disorder, sites)).astype(np.complex128)
    hop = -np.exp(2j * np.pi * flux / sites)
    for i in range(sites):
        j = (i + 1) % sites
        h[j, i] += hop
        h[i, j] += np.conj(hop)
    return lucid.tensor(h)


def energy(h, psi):
    """The Rayleigh quotient Re(psi^H H psi) / (psi^H psi), a real scalar."""
    norm = lucid.real(psi.conj() @ psi)
    return lucid.real(psi.conj() @ (h @ psi)) / norm


def ground_state(h, steps=4000, seed=1):
    """Gradient descent on energy from a random complex psi (normalised after each step, which
    leaves the quotient unchanged); (energy, psi, steps taken)."""
    rng = np.random.default_rng(seed)
    n = h.shape[0]
    psi = lucid.tensor(rng.standard_normal(n) + 1j * rng.standard_normal(n))
    psi = (psi / lucid.abs(psi).pow(2).sum().sqrt()).requires_grad_()
    spread = float(np.abs(h.numpy()).sum(axis=1).max())      # bounds |eigenvalues|
    lr = 0.5 / spread
    previous = np.inf
    for step in range(1, steps + 1):
        e = energy(h, psi)
        psi.grad = None
        e.backward()
        with lucid.no_grad():
            psi -= lr * psi.grad
            psi /= lucid.abs(psi).pow(2).sum().sqrt()
        if abs(previous - e.item()) < 1e-14:
            break
        previous = e.item()
    return energy(h, psi).item(), psi.detach(), step


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sites", type=int, default=24)
    parser.add_argument("--flux", type=float, default=0.3)
    args = parser.parse_args()
    h = hamiltonian(args.sites, args.flux)
    e, psi, steps = ground_state(h)
    values, vectors = np.linalg.eigh(h.numpy())
    overlap = abs(np.vdot(vectors[:, 0], psi.numpy()))
    print(f"sites: {args.sites}, flux: {args.flux}")
    print(f"gradient descent steps: {steps}")
    print(f"ground-state energy: {e:.12f}")
    print(f"exact (eigvalsh): {values[0]:.12f}")
    print(f"difference: {abs(e - values[0]):.3e}")
    print(f"overlap with the exact ground state: {overlap:.9f}")


if __name__ == "__main__":
    main()
