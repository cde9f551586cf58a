"""Layer 2 beside training: collective algorithms and orders, NCCL's tuning tables, paths, link
loads, the cost model, schedules, routing and replay."""
