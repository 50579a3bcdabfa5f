"""K-NN over the validation prompts (paper eq. 3) and its kind."""
