"""Export and import of a project."""
