"""What is computed: semivalue weights (Shapley, Banzhaf, beta, weighted Banzhaf), interaction indices, Owen
hierarchies, the Moebius transform."""
