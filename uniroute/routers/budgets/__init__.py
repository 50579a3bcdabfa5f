"""What a budget means for the rule: the path over lambda and the hard cap on mean cost."""
