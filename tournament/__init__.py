"""Engine-versus-engine tournaments for English draughts."""
