"""Code that runs inside the sandbox child, before the generated code.

These modules import the standard library only: the runner starts them with
`python -s -S` from this folder, and the parent imports `landlock` and
`seccomp` as `factory.sandbox.child.*` just to probe what the kernel offers.
"""
