"""Bronze-shaped event and timeline builders shared by the unit and differential tests."""
