#!/usr/bin/perl
# streams.pl HOST PORT TOKEN COUNT WAIT_S HOLD_S -- a crowd of browsers' worth of live streams for
# scripts/containers.sh, run in a container of its own on the compose network so that the load
# balancer sees each such container as a client address of its own: opens COUNT connections,
# sends GET /v1/stream with the browser token on each, and waits up to WAIT_S seconds in all for
# every one to answer 200 and its `hello` event (a connect that fails is tried again until then).
# Prints "hello N of COUNT", keeps the streams open HOLD_S seconds more (the script counts them
# open on the replicas meanwhile), and exits 0 only when all had their hello. Plain perl-base
# (IO::Socket::INET, IO::Select): the minimal Debian image has nothing else.
use strict;
use warnings;
use IO::Select;
use IO::Socket::INET;

$| = 1; # the lines out before the hold, not at exit
my ($host, $port, $token, $count, $wait_s, $hold_s) = @ARGV;
die "usage: streams.pl HOST PORT TOKEN COUNT WAIT_S HOLD_S\n" unless defined $hold_s;
my $HEAD_MAX = 16384; # bytes kept of each stream until its hello: the head, retry and hello fit
my $deadline = time + $wait_s;
my $request = "GET /v1/stream HTTP/1.1\r\nHost: $host\r\nAccept: text/event-stream\r\n"
    . "Authorization: Bearer $token\r\n\r\n";

my (%seen, %ok);
my $select = IO::Select->new;
my $RETRY_S = 0.5; # between connects that failed: a container just started on the network
                  # may not have its name server answering for the balancer's name yet
for my $i (1 .. $count) {
    my $s;
    until ($s = IO::Socket::INET->new(PeerAddr => $host, PeerPort => $port, Timeout => $wait_s)) {
        die "connect $i: $! ($@)\n" if time >= $deadline;
        select(undef, undef, undef, $RETRY_S);
    }
    syswrite($s, $request) == length($request) or die "write $i: $!\n";
    $seen{$s} = '';
    $select->add($s);
}
while ($select->count > 0 && time < $deadline) {
    for my $s ($select->can_read(1)) {
        my $n = sysread($s, my $buf, 4096);
        if (!$n) { # closed (refused, cut) before its hello
            $select->remove($s);
            next;
        }
        $seen{$s} .= $buf;
        if ($seen{$s} =~ /\AHTTP\/1\.1 200 .*\r\n\r\n.*^event: hello$/ms) {
            $ok{$s} = 1;
            $select->remove($s);
        } elsif (length $seen{$s} > $HEAD_MAX) {
            $select->remove($s);
        }
    }
}
my $got = scalar keys %ok;
print "hello $got of $count\n";
for my $s (grep { !$ok{$_} } keys %seen) {
    my ($first) = split /\r\n/, $seen{$s};
    print "  no hello: ", ($first // '(nothing)'), "\n";
    last;
}
sleep $hold_s;
exit($got == $count ? 0 : 1);
