-- Drop the stored prompt row whose results were just moved to the prompt it was merged into.
delete from prompts where prompt_id = $from_prompt_id
