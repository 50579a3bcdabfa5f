-- Move a stored prompt's results to the id of the prompt it is being merged into (see uniroute/ingest.py).
update results set prompt_id = $into_prompt_id where prompt_id = $from_prompt_id
