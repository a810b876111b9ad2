"""LockedProfile: the decision written down (lock), checked again (check) and reported (report)."""
