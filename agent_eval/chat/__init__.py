"""Talking to a build's OpenAI-compatible server: where it answers (`endpoint`), the chat client the agents,
the grid and the cluster use (`client`), and teacher forcing over `/tokenize` and `prompt_logprobs`
(`teacher`, used by fidelity). It knows nothing of builds files or engines; `builds` makes its `Endpoint`s.
"""
