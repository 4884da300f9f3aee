"""AWS Lambda: the events Lambda delivers, the self-invocation that carries work past the
ack, and the per-container runtime. ``bot.lambda_handler`` is the thin entry point."""
