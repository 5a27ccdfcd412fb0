"""Collection statistics (df, cf, N) and stop words for the methods that weigh words globally."""
