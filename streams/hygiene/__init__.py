"""The scheduled hygiene pass and its schedule."""
