# raftcat node image. No base image: the static binary is all there is.
# scripts/cluster-up.sh builds the binary (CGO_ENABLED=0) into
# .image/raftcat on the host before building this image.
FROM scratch
COPY .image/raftcat /raftcat
VOLUME ["/data"]
EXPOSE 8080 8300 8301 8301/udp
ENV RAFTCAT_DATA_DIR=/data \
    RAFTCAT_HTTP_ADDR=0.0.0.0:8080 \
    RAFTCAT_RAFT_ADDR=0.0.0.0:8300 \
    RAFTCAT_GOSSIP_ADDR=0.0.0.0:8301
ENTRYPOINT ["/raftcat"]
CMD ["serve"]
