package natsfeed
