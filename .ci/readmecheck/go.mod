module readmecheck

go 1.25
