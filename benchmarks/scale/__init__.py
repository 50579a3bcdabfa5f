"""The whole pipeline at size: `pipeline` runs its sections (`mmlu`, `synthetic`, start-up) in child processes;
`operations` is the library calls they time."""
