"""ParaDL's own oracle (parallel_analysis.py, Kahira et al., HPDC 2021) reproduced: its
formulas (paradl_tool) and the `paradl` stack's costing of oracle's points with them
(paradl_stack; a stack's ``cost_model: paradl-tool``)."""
