"""The paper's further experiments: their commands (`experiments`), the runner and page writer (`extensions`), the
page itself (`page`) and the rule-made prompt-attribute labels (`attribute_rules`)."""
