# matrix_lib.sh -- shared by ff_matrix.sh and keyed_matrix.sh, which run
# each case two ways that must give the same reports (sourced; sets
# fail=1 on a difference).  T: the scratch folder; side: the suffix of
# the run folder pos() reads ("f" or "k").

# wall DIR: summary.csv without its sim_wall_s column
wall() {
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "sim_wall_s")
			    c = i }
		 { if (c) $c = "-"; print }' OFS=, "$1/summary.csv"
}

# same NAME A B: $T/NAME.A and $T/NAME.B hold the same requests.csv,
# timeseries.csv and groups.csv, byte for byte, and the same summary.csv
# but for sim_wall_s; returns 1 when a file is missing
same() {
	for f in requests.csv timeseries.csv groups.csv; do
		[ -s "$T/$1.$2/$f" ] ||
		    { echo "FAIL $1: no $f"; fail=1; return 1; }
		cmp -s "$T/$1.$2/$f" "$T/$1.$3/$f" ||
		    { echo "FAIL $1: $f differs"
		      diff "$T/$1.$2/$f" "$T/$1.$3/$f" | head -5
		      fail=1; }
	done
	wall "$T/$1.$2" >"$T/$1.$2.sum"
	wall "$T/$1.$3" >"$T/$1.$3.sum"
	cmp -s "$T/$1.$2.sum" "$T/$1.$3.sum" ||
	    { echo "FAIL $1: summary.csv differs"; fail=1; }
	return 0
}

# pos NAME COLUMN: the case's summary.csv has COLUMN > 0 (what the case
# is there for happened)
pos() {
	v=$(awk -F, -v c="$2" 'NR == 1 { for (i = 1; i <= NF; i++)
		if ($i == c) k = i; next } { print $k + 0; exit }' \
	    "$T/$1.$side/summary.csv" 2>/dev/null)
	awk -v v="${v:-0}" 'BEGIN { exit !(v > 0) }' ||
	    { echo "FAIL $1: $2 is ${v:-missing}, not above 0"; fail=1; }
}
