"""Teacher-forced fidelity: recorded steps replayed to every build, compared with the reference."""
