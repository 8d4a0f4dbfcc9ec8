"""The case engine: every feature family is drawn, executed on a target, judged against the reference and
recorded the same way, whether by a pytest property, a campaign, a replay or a bisection."""
