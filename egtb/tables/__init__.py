"""Endgame tables: materials, the position index, the retrograde solver, the build driver, storage, verification and statistics."""
