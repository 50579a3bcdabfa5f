"""Mutation testing of the core modules (`make mutation`): each module's mutants against its fast tests."""
