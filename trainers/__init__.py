"""The bundled RL trainer (GRPO family); built in its own issue."""
