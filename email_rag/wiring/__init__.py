"""The composition root: Services builds each port's adapter from settings, once per process."""
