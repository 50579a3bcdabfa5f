"""The pool: router versions in the store, the evidence behind each model's Psi row, and the operations that change who
is routable (onboard, retire, roll back)."""
