"""The rules core: squares, move generation, Board/Move, FEN and PDN notation, PDN games."""
