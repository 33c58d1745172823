"""English draughts endgame tables: rules core, builder, prober."""
