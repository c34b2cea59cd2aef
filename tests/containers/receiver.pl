#!/usr/bin/perl
# receiver.pl -- the webhook receiver of scripts/containers.sh, run inside the compose network
# (tests/containers/compose.ci.yaml). Answers every POST with 204 and appends its webhook-id
# header to /tmp/received, one line per request, so the script can count deliveries per id.
# GET answers 200 (the healthcheck). Plain perl-base: the minimal Debian image has nothing else.
use strict;
use warnings;
use IO::Socket::INET;

my $LOG = '/tmp/received';
my $BODY_MAX = 1 << 20;
my $server = IO::Socket::INET->new(LocalAddr => '0.0.0.0', LocalPort => 9000, Listen => 16,
                                   ReuseAddr => 1) or die "listen: $!";
$| = 1;
print "receiver listening on :9000\n";
while (my $c = $server->accept) {
    $c->timeout(5);
    my ($head, $buf) = ('', '');
    while ($head !~ /\r\n\r\n/ && sysread($c, $buf, 4096)) {
        $head .= $buf;
    }
    my ($hdr, $body) = split /\r\n\r\n/, $head, 2;
    if (!defined $hdr) { # a healthcheck's bare connect
        close $c;
        next;
    }
    $body //= '';
    my ($len) = $hdr =~ /^content-length:\s*(\d+)/im;
    $len = 0 unless defined $len && $len <= $BODY_MAX;
    while (length($body) < $len && sysread($c, $buf, 4096)) {
        $body .= $buf;
    }
    if ($hdr =~ /^POST /) {
        my ($id) = $hdr =~ /^webhook-id:\s*(\S+)/im;
        open(my $fh, '>>', $LOG) or die "open $LOG: $!";
        print $fh(($id // 'none') . "\n");
        close $fh;
        print $c "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
    } else {
        print $c "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nok\n";
    }
    close $c;
}
