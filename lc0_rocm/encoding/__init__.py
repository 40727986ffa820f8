"""Position encoding for the network: the 112 input planes and the 1858-entry policy map."""
