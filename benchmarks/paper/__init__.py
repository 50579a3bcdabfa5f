"""The paper's further experiments: their commands (`experiments`), the runner (`extensions`) and the rule-made
prompt-attribute labels (`attribute_rules`); their page is written by tools/pages/paper_extensions.py."""
