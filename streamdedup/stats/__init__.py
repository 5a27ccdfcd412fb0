"""Collection statistics (df, cf, N) and stop words for the methods that weigh words globally."""

import logging

# wordfreq loads jieba for Chinese, and jieba logs its dictionary loading at DEBUG to stderr
logging.getLogger("jieba").setLevel(logging.WARNING)
