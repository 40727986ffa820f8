"""Search: PUCT/MCTS over positions evaluated by a backend, and time management."""
