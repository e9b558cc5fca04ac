"""Looking at a run's data: `factory ls` (listing) and `factory show --random/--next` (picking)."""
