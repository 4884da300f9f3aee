"""Example graphs, one per way a graph can ask a person; opt-in outside the demo.

Each module shows one interrupt source (a tool's ``interrupt``, a tool / batch / node
hook, Strands' ``HumanInTheLoop``, ``review_after``, nested graphs, a review cycle) with an
offline script, so the demo and the tests run them without a model provider. They move
no money and restart nothing, but on Bedrock anyone could start them, so a real
workspace only lists them when asked to.
"""
