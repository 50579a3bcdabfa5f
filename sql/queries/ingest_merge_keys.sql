-- Point a format key at the prompt it was merged into.
update prompt_keys set prompt_id = $into_prompt_id where prompt_id = $from_prompt_id
